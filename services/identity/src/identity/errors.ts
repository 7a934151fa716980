import { AppError, defineMessages } from '@app/platform';

/** The identity service's errors: stable codes, statuses and localized messages. */
export const identityNotFound = (id: string) => new AppError('IDENTITY_NOT_FOUND', 404, 'identity.notFound', { id });
export const identityEmailNotFound = () => new AppError('IDENTITY_NOT_FOUND', 404, 'identity.emailNotFound');
export const emailTaken = (email: string) => new AppError('IDENTITY_EMAIL_TAKEN', 422, 'identity.emailTaken', { email });
export const privilegedFieldsForbidden = () => new AppError('IDENTITY_PRIVILEGED_FIELDS', 403, 'identity.privilegedFields');
/** The change would leave no active admin: nobody could grant roles or activate anyone again. */
export const lastActiveAdmin = () => new AppError('IDENTITY_LAST_ADMIN', 409, 'identity.lastAdmin');

defineMessages({
  en: {
    'identity.notFound': 'No identity has id {id}.',
    'identity.emailNotFound': 'No identity has this email.',
    'identity.emailTaken': 'The email {email} is already used by another identity.',
    'identity.privilegedFields': 'Only an admin may set roles or activation.',
    'identity.lastAdmin': 'This is the last active admin: it cannot be demoted or deactivated. Make another identity an admin first.',
  },
  'pt-BR': {
    'identity.notFound': 'Nenhuma identidade tem o id {id}.',
    'identity.emailNotFound': 'Nenhuma identidade tem este e-mail.',
    'identity.emailTaken': 'O e-mail {email} já é usado por outra identidade.',
    'identity.privilegedFields': 'Somente um administrador pode definir papéis ou ativação.',
    'identity.lastAdmin': 'Este é o último administrador ativo: não pode ser rebaixado nem desativado. Torne outra identidade administradora primeiro.',
  },
  es: {
    'identity.notFound': 'Ninguna identidad tiene el id {id}.',
    'identity.emailNotFound': 'Ninguna identidad tiene este correo electrónico.',
    'identity.emailTaken': 'El correo electrónico {email} ya lo usa otra identidad.',
    'identity.privilegedFields': 'Solo un administrador puede establecer roles o la activación.',
    'identity.lastAdmin': 'Es el último administrador activo: no se puede degradar ni desactivar. Haga administradora a otra identidad primero.',
  },
  fr: {
    'identity.notFound': "Aucune identité n'a l'id {id}.",
    'identity.emailNotFound': "Aucune identité n'a cette adresse e-mail.",
    'identity.emailTaken': "L'adresse e-mail {email} est déjà utilisée par une autre identité.",
    'identity.privilegedFields': "Seul un administrateur peut définir les rôles ou l'activation.",
    'identity.lastAdmin': "C'est le dernier administrateur actif : il ne peut être ni rétrogradé ni désactivé. Faites d'abord d'une autre identité un administrateur.",
  },
  de: {
    'identity.notFound': 'Keine Identität hat die ID {id}.',
    'identity.emailNotFound': 'Keine Identität hat diese E-Mail-Adresse.',
    'identity.emailTaken': 'Die E-Mail-Adresse {email} wird bereits von einer anderen Identität verwendet.',
    'identity.privilegedFields': 'Nur ein Admin darf Rollen oder die Aktivierung setzen.',
    'identity.lastAdmin': 'Dies ist der letzte aktive Admin: er kann weder herabgestuft noch deaktiviert werden. Machen Sie zuerst eine andere Identität zum Admin.',
  },
});
